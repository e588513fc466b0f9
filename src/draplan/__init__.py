"""draplan: Kubernetes scheduling and autoscaling that speak one language about accelerators."""

__version__ = "0.1.0"

__all__ = ["__version__"]
