"""dlweb kernel: data formats, content addressing, RPC, multicast lookup and configuration."""
