"""The learner's copy of the course: where it is, opening it, what is passed, what is handed in.

    folder      the course folder: the nearest folder, from the working folder up, that holds
                notebooks/ and exercises/ (never where lessonkit is installed)
    launch      `lessonkit lab`: JupyterLab on lesson 00, its URL printed once it answers

May import: the standard library only, so that every layer may use it
(``lessonkit.grading``'s ``check()`` records progress here). It never imports the
layers themselves.
"""
