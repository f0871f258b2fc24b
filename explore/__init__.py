"""``hwcheck explore``: walk the protocol by hand in a browser, and step through any trace.

``session.py`` holds one exploration (the model, the path walked so far, the cursor) and answers
with JSON built only from the Model the engines use; ``server.py`` serves it and ``page.html``
on 127.0.0.1; ``search.py`` runs bfs from the current state in a thread that can be stopped.
"""
