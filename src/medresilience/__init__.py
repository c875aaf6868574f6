"""medresilience: does a model keep a correct medical judgment when the words around the question
mislead? Library first; the `medres` command is a thin layer on top."""

__version__ = "0.1.0"
