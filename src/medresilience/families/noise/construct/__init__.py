"""Building clinical-noise suites: diagnosis cases from MCQ items (cases), an exact clinical
sentence splitter (split), one module per perturbation (redherring, abbreviations, rewrite), the
checker model (checker) and the builder (build: `medres build noise`).

May import: the spine (every module outside families/) and this family's modules."""
