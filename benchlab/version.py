"""The version of benchlab, apart, so modules that record it need not import the package."""

__version__ = "0.1.0"
