#!/usr/bin/env node
/**
 * ipfsd: a small IPFS daemon for OVIG's loopback devnet.
 *
 * Why: the Python side speaks the Kubo RPC API (`POST /api/v0/...`) so that
 * it works unchanged against a real Kubo (>= 0.20) in production. For the
 * embedded devnet a Go toolchain or a Kubo binary cannot be installed from
 * the package registries, but Node 22 and Helia can (npm). This daemon is
 * therefore Helia (blocks, pins, bitswap over libp2p) behind the subset of
 * Kubo's RPC API the client uses, with Kubo's request options, response
 * shapes, error shape and, crucially, Kubo's CIDs for `add`.
 *
 * Layout:
 *   cli.mjs       command line
 *   repo.mjs      repo dir: lock, persistent identity, `api` file
 *   node.mjs      Helia + loopback-only libp2p, --peer re-dial loop
 *   http.mjs      HTTP server, request context, errors, streaming
 *   kubo.mjs      Kubo option/argument parsing and error shape
 *   commands.mjs  the command handlers
 *   add.mjs       multipart -> UnixFS importer with Kubo's parameters
 *   pins.mjs      Kubo pin semantics over Helia's pin store
 *   dag.mjs       DAG walking helpers
 *   multipart-compat.mjs  accept `Content-Disposition: file` parts
 *   bitswap-fix.mjs       work-around for a bitswap re-want stall
 *
 * Exit codes: 0 after a clean stop (SIGTERM, SIGINT, /api/v0/shutdown),
 * 2 for usage errors, a port in use or a locked repo, 1 for anything else.
 */
import { once } from 'node:events'
import { patchBitswapResend } from './bitswap-fix.mjs'
import { createCommands } from './commands.mjs'
import { UsageError, parseCommandLine } from './cli.mjs'
import { createApiServer, isCancellation } from './http.mjs'
import { keepPeersConnected, startNode } from './node.mjs'
import { RepoError, loadOrCreateIdentity, lockRepo, removeApiFile, repoPaths, writeApiFile } from './repo.mjs'

const STOP_DEADLINE_MS = 5000

/** @param {string} msg */
function log (msg) {
  process.stderr.write(`${new Date().toISOString()} ipfsd: ${msg}\n`)
}

/**
 * Print one line and exit with code 2 (the "you asked for something
 * impossible" exit of this daemon).
 *
 * @param {string} msg
 */
function fail (msg) {
  process.stderr.write(`ipfsd: ${msg}\n`)
  process.exit(2)
}

/**
 * @param {unknown} err
 * @returns {boolean}
 */
function isAddrInUse (err) {
  for (let e = err; e != null; e = e.cause) {
    if (e.code === 'EADDRINUSE' || /EADDRINUSE|address already in use/i.test(String(e.message))) return true
    if (Array.isArray(e.errors) && e.errors.some(isAddrInUse)) return true
  }
  return false
}

/**
 * Bind the API port before starting Helia, so a taken port fails fast.
 *
 * @param {import('node:http').Server} server
 * @param {string} host
 * @param {number} port
 * @returns {Promise<import('node:net').AddressInfo>}
 */
async function listen (server, host, port) {
  server.listen(port, host)
  try {
    await once(server, 'listening')
  } catch (err) {
    if (err.code === 'EADDRINUSE') {
      throw new UsageError(`port ${port} on ${host} is already in use; stop the other process or pass --api-port`)
    }
    if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND') {
      throw new UsageError(`cannot listen on ${host}:${port} (${err.code}); pass another --api-host`)
    }
    throw err
  }
  return server.address()
}

async function main () {
  const config = parseCommandLine(process.argv.slice(2))
  const paths = repoPaths(config.repo)
  const releaseLock = lockRepo(paths)

  const shutdown = new AbortController()
  let markReady
  const ready = new Promise(resolve => { markReady = resolve })
  let node
  let stopPeers = () => {}
  let stopping

  const commandsRef = {}
  const server = createApiServer({ commands: commandsRef, ready, shutdownSignal: shutdown.signal, log })

  /** Stop everything; idempotent. */
  const stop = (reason) => {
    stopping ??= (async () => {
      log(`stopping (${reason})`)
      const deadline = setTimeout(() => {
        log('stop took too long, exiting anyway')
        removeApiFile(paths)
        releaseLock()
        process.exit(0)
      }, STOP_DEADLINE_MS)
      deadline.unref()
      server.close()
      shutdown.abort()
      server.closeIdleConnections()
      setTimeout(() => server.closeAllConnections(), 1000).unref()
      stopPeers()
      try {
        await node?.stop()
      } catch (err) {
        log(`error while stopping Helia: ${err.message}`)
      }
      removeApiFile(paths)
      releaseLock()
      log('stopped')
      process.exit(0)
    })()
    return stopping
  }

  // a bad request or a misbehaving peer must never take the daemon down
  process.on('unhandledRejection', (err) => {
    if (isCancellation(err)) return // leftovers of a cancelled request
    log(`unhandled rejection: ${err?.stack ?? err}`)
  })
  process.on('uncaughtException', (err) => { log(`uncaught exception: ${err?.stack ?? err}`) })
  process.on('SIGTERM', () => { stop('SIGTERM') })
  process.on('SIGINT', () => { stop('SIGINT') })

  try {
    const bound = await listen(server, config.apiHost, config.apiPort)
    const privateKey = await loadOrCreateIdentity(paths)
    if (!await patchBitswapResend()) {
      log('warning: @helia/bitswap has an unexpected shape; re-wants of sent blocks may stall (see bitswap-fix.mjs)')
    }
    try {
      node = await startNode({ paths, privateKey, swarmPort: config.swarmPort })
    } catch (err) {
      if (isAddrInUse(err)) {
        throw new UsageError(`port ${config.swarmPort} on 127.0.0.1 is already in use; stop the other process or pass --swarm-port`)
      }
      throw err
    }
    const { helia } = node
    Object.assign(commandsRef, createCommands({ helia, requestShutdown: () => { stop('shutdown command') }, log }))
    stopPeers = keepPeersConnected(helia.libp2p, config.peers, log)
    markReady()

    writeApiFile(paths, bound)
    const peerId = helia.libp2p.peerId.toString()
    const swarm = helia.libp2p.getMultiaddrs()[0]?.toString() ?? ''
    const apiHost = config.apiHost.includes(':') ? `[${config.apiHost}]` : config.apiHost
    log(`repo ${paths.dir}, peer ${peerId}, swarm ${swarm}`)
    process.stdout.write(`ipfsd ready api=http://${apiHost}:${bound.port} peer=${peerId} swarm=${swarm}\n`)
  } catch (err) {
    server.close()
    removeApiFile(paths)
    releaseLock()
    throw err
  }
}

main().catch(err => {
  if (err instanceof UsageError || err instanceof RepoError) fail(err.message)
  process.stderr.write(`ipfsd: fatal: ${err?.stack ?? err}\n`)
  process.exit(1)
})
