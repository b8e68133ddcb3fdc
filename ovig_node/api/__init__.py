"""The owner's API and dashboard: contract state, indexed from events, served read-only over HTTP.

- ``settings``: where to read (RPC, contracts, IPFS) and what to show (gateway, labels, watchers: the
  owner's own watcher nodes are found and trusted without a flag);
- ``store``: the SQLite read model (one writer; requests read pooled snapshots);
- ``projection``: folds each decoded event into the read model;
- ``indexer``: the background thread that polls the EventScanner and runs the projection;
- ``queries``: read model rows to responses; ``timelines``: a task's events and windows as lines;
- ``models``: the response models (the OpenAPI schema);
- ``reports``: challengers' replay reports, fetched from IPFS and hash-checked;
- ``watchers``: verdicts of the owner's own watcher nodes, read from their state files;
- ``routers/*``: one APIRouter per resource; ``main``: wires them, the dashboard and the indexer;
- ``dashboard``: the dashboard page's first paint (the task list), rendered on the server;
- ``server``: runs the app under uvicorn; ``cli``: `ovig api serve`.
"""
