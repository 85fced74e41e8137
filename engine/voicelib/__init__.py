"""Designing and judging voices: the gates a library voice must pass (intelligibility, pitch,
distinctness, quality), the search that makes the shipped library (`troupe voices design`).
Used offline only: nothing here runs in a show."""
