__version__ = "2.32.3"
