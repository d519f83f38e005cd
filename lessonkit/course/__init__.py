"""The learner's copy of the course on disk: where it is, what is passed, what is handed in.

    folder      the course folder: the nearest folder, from the working folder up, that
                holds notebooks/ and exercises/ (never where lessonkit is installed); the
                exercises in course order
    record      the progress record: one line per exercise, written by each ``check()``
    archive     the hand-in: one zip of the exercise notebooks and a manifest, written by
                ``submit()`` and read -- in memory, size-capped -- by ``lessonkit grade``

May import: the standard library only, so that every layer may use it (the grader's
``check()`` records progress here, ``lessonkit grade`` reads hand-ins with it). What a
learner runs on top of it lives in ``lessonkit.learner``.
"""
