"""Who grades what, where: make grade and grade-all on this machine's GPUs
(local), grade-all as a Slurm array job (slurm), Gradescope's autograder
(gradescope). Each hands a submission to the pipeline (pipeline.grade_one)."""
