"""The test toolkit: helpers that start real things on loopback and wait until they answer, for
the tests and the benchmarks alike. No fixtures (the tests' conftest files make fixtures of
these), and nothing of dlweb's own runtime imports this package.

- `waits`: `wait_until` and `eventually`, the one polling loop every wait goes through (a
  deadline, the process that must keep running, what to show on failure: `NotReady`), and
  `answers`, the probe of an HTTP server.
- `ports`: `free_port` and `free_block`, free loopback ports below the ephemeral range, each
  test worker's from a slice of its own.
- `web_server`: `WebServer`, an aiohttp application on loopback, served from a thread of its own
  or in the caller's event loop; `answering`, the application of a one-handler site.
- `cluster`: a cluster of real processes (`Cluster`, `NodeProcess`, `Service`, `clusters_in`),
  its configuration (`write_cluster_config`, `write_config`) and what the master's status says
  of it (`alive`, `settled`, `checked`).
- `disk`: what a storage node holds on its disk, read and damaged from outside the node.
- `nemesis`: the fault soak (`soak`): a cluster taking inserts while a nemesis kills, pauses,
  fills and damages its parts; its report.
- `postgres`: `PostgresServer`, a PostgreSQL server of Debian's binaries in a temporary folder.
- `peers`: `peer_venv`, the cached virtual environments of the peers (other archives' tools),
  and `wacz_validate`, py-wacz's check of a WACZ package.
- `pywb`: pywb as a peer: `running_pywb` (replay), `recording_pywb` (a recording proxy),
  `replay`, `get`.
- `icecast`: `Icecast`, Debian's icecast2 with ffmpeg encoders feeding its mounts.
- `spawn`: `spawn` and `end`, processes that die with the run that started them (a stop that
  hangs fails with their stacks); `Started`, a thing started on entry and closed on exit.
- `cdx_toolkit`, `memento_clients`, `replayweb`: other projects' clients of the archive, each
  in an environment of its own: cdx-toolkit's paging and `wb=` fetches, memento-cli and
  memento-client, ReplayWeb.page's viewer serving an exported WACZ.
"""
