"""What the tests share, imported as `tests.support.<module>` (no `sys.path` edits):

    paths      where the checkout and its configs are (`REPO`, `VERTEX_CONFIG`, ...)
    checkout   a copy of the checkout's packages a test may edit (a code change between a kill and a resume)
"""
