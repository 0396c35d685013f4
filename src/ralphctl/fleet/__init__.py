"""Fleet mode: loops run by workers on many machines, held through PostgreSQL (docs/fleet.md).

PostgreSQL holds the records, the leases (``leases``) and the job queue of procrastinate
(``backbone``); git holds the work (``gitremote``); a worker's disk holds nothing that matters.
"""
