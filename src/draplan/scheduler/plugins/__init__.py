"""In-tree plugins, each named after its kube-scheduler namesake."""
