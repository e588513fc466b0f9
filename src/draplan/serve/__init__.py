"""`draplan serve`: the cluster model kept current from a live API server, and what it answers."""
