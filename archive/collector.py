"""When the cyclic garbage collector runs, by the kind of work a command does.

Python's default (a pass after 700 new container objects, 10, 10) suits small programs. A server
or an import makes hundreds of thousands of short-lived containers (records, captures, inventory
entries, requests), almost none in cycles: fewer passes save their time. But a pass looks at every
young object, so how rare they may be depends on whether anyone waits on the process meanwhile.
"""

# Servers: a pass after 10,000 new containers. Made rarer still, a pass over 100,000 young objects
# stalls the requests waiting on it: replay's 99th-percentile latency went from 24 ms to 140 ms.
SERVING = (10_000, 20, 20)
# Batch commands (import, export): a pass after 100,000, so an import of 10,000 records runs none.
BATCH = (100_000, 20, 20)
