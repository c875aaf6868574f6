"""The released layouts: the study's MedMisBench release (medmisbench), this project's release layout
(release) and `medres export` (export).

May import: the spine (every module outside families/) and this family's modules."""
