"""One APIRouter per resource.

Handlers are ``async def``: each reads the read model in about a millisecond, less than the two hops
through the thread pool a plain ``def`` handler costs. Only the report, fetched over the network from
IPFS, runs in the thread pool.
"""
