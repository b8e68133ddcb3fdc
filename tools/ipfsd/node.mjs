/**
 * Builds the Helia node: filesystem stores, a loopback-only libp2p (TCP,
 * noise, yamux, identify) and bitswap as the only block broker.
 *
 * `createHelia()` from the `helia` package is deliberately NOT used: it adds
 * the trustless-gateway HTTP broker, delegated HTTP routing, the public
 * bootstrap list, DHT, mDNS, UPnP, autoNAT, relays, WebRTC and WebSockets,
 * all of which try to reach the internet. Instead the node is assembled from
 * the light constructors with only what a loopback devnet needs.
 */
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { withBitswap } from '@helia/bitswap'
import { withLibp2pLight } from '@helia/libp2p'
import { identify } from '@libp2p/identify'
import { tcp } from '@libp2p/tcp'
import { multiaddr } from '@multiformats/multiaddr'
import { FsBlockstore } from 'blockstore-fs'
import { FsDatastore } from 'datastore-fs'
import { createHeliaLight } from 'helia'

export const AGENT_VERSION = 'ovig-ipfsd/0.1.0'

/**
 * True when `ma` points at this machine (127.0.0.0/8 or ::1). Everything
 * else is refused by the connection gater, so the node can never dial out.
 *
 * @param {import('@multiformats/multiaddr').Multiaddr} ma
 */
export function isLoopbackAddr (ma) {
  const [first] = ma.getComponents()
  if (first == null) return false
  if (first.name === 'ip4') return first.value?.startsWith('127.') === true
  if (first.name === 'ip6') return first.value === '::1'
  return false
}

/**
 * Open the stores and start Helia + libp2p.
 *
 * @param {object} opts
 * @param {ReturnType<import('./repo.mjs').repoPaths>} opts.paths
 * @param {import('@libp2p/interface').PrivateKey} opts.privateKey
 * @param {number} opts.swarmPort
 */
export async function startNode ({ paths, privateKey, swarmPort }) {
  const blockstore = new FsBlockstore(paths.blocks)
  const datastore = new FsDatastore(paths.datastore)
  await blockstore.open()
  await datastore.open()

  const helia = withBitswap(withLibp2pLight(createHeliaLight({ blockstore, datastore }), {
    privateKey,
    nodeInfo: { userAgent: AGENT_VERSION },
    addresses: { listen: [`/ip4/127.0.0.1/tcp/${swarmPort}`] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    peerDiscovery: [],
    connectionGater: {
      denyDialMultiaddr: (ma) => !isLoopbackAddr(ma)
    },
    services: { identify: identify() }
  }))

  try {
    await helia.start()
  } catch (err) {
    await helia.stop().catch(() => {})
    await closeStores(blockstore, datastore)
    throw err
  }

  return {
    helia,
    async stop () {
      await helia.stop()
      await closeStores(blockstore, datastore)
    }
  }
}

async function closeStores (blockstore, datastore) {
  await blockstore.close().catch(() => {})
  await datastore.close().catch(() => {})
}

/**
 * Keep connections to the --peer addresses: dial at start, then re-dial
 * whenever the connection is gone. Failures are logged, never fatal.
 *
 * @param {import('@libp2p/interface').Libp2p} libp2p
 * @param {string[]} addrs
 * @param {(msg: string) => void} log
 * @returns {() => void} stops the loop
 */
export function keepPeersConnected (libp2p, addrs, log) {
  const targets = addrs.map(a => ({ ma: multiaddr(a), peer: peerIdOf(a), failures: 0, timer: undefined }))
  let stopped = false

  const schedule = (target, ms) => {
    if (stopped) return
    clearTimeout(target.timer)
    target.timer = setTimeout(() => { attempt(target) }, ms)
    target.timer.unref?.()
  }

  const attempt = async (target) => {
    if (stopped) return
    if (libp2p.getConnections().some(c => c.remotePeer.toString() === target.peer)) {
      schedule(target, 5000)
      return
    }
    try {
      await libp2p.dial(target.ma, { signal: AbortSignal.timeout(10_000) })
      target.failures = 0
      log(`connected to peer ${target.ma.toString()}`)
      schedule(target, 5000)
    } catch (err) {
      target.failures++
      if (target.failures === 1 || target.failures % 30 === 0) {
        log(`dial ${target.ma.toString()} failed (attempt ${target.failures}, will retry): ${err.message}`)
      }
      schedule(target, Math.min(1000 * target.failures, 5000))
    }
  }

  const onDisconnect = (evt) => {
    const id = evt.detail.toString()
    for (const target of targets) {
      if (target.peer === id && !stopped) {
        log(`peer ${id} disconnected, re-dialing`)
        schedule(target, 500)
      }
    }
  }

  libp2p.addEventListener('peer:disconnect', onDisconnect)
  for (const target of targets) schedule(target, 0)

  return () => {
    stopped = true
    libp2p.removeEventListener('peer:disconnect', onDisconnect)
    for (const target of targets) clearTimeout(target.timer)
  }
}

/** @param {string} addr */
function peerIdOf (addr) {
  const comp = multiaddr(addr).getComponents().findLast(c => c.name === 'p2p')
  return comp?.value ?? ''
}
