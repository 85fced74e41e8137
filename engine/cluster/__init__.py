"""Scale-out: voicing on a Ray cluster while the head's scheduler keeps the order.

`ring` maps roles to workers (weighted consistent hashing), `balance` keeps their load in
proportion to capacity, `snapshots` gives watchers versioned views of the head's state;
`head`, `worker` and `connect` (which need the optional `cluster` extra, Ray) run batches
on worker actors with nothing lost when one dies.
"""
