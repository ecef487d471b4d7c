"""The local cluster launcher, example configurations and service units."""
