"""The course as its authors keep it, beside the lessons (``lab``) and the grader (``grading``).

    assign       `lessonkit assign`: the exercise notebooks, generated from the solutions

Nothing here runs a learner's code or grades it; nothing in ``grading`` imports it.
"""
