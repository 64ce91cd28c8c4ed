"""The pipelines (chains of recipe stages) each recipe family defines: ``chains.nano3``."""
