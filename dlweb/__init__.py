"""The `dlweb` command: its root, into which every package registers its subcommands (the
`dlweb.commands` entry points), and the root's own commands, `config`, `get` and `captures`."""
