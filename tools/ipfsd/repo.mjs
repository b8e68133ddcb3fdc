/**
 * The on-disk repository of one ipfsd instance:
 *
 *   DIR/blocks/       blockstore-fs (one file per block)
 *   DIR/datastore/    datastore-fs (pins, peer store, Helia metadata)
 *   DIR/identity.key  libp2p Ed25519 private key, protobuf-encoded, mode 0600
 *   DIR/repo.lock     pid of the daemon using the repo
 *   DIR/api           "/ip4/HOST/tcp/PORT" while the API is up (as Kubo)
 */
import fs from 'node:fs'
import path from 'node:path'
import { generateKeyPair, privateKeyFromProtobuf, privateKeyToProtobuf } from '@libp2p/crypto/keys'

/** The repo cannot be used (locked by a live daemon, unreadable key, ...). */
export class RepoError extends Error {
  name = 'RepoError'
}

/**
 * @param {string} dir
 * @returns {{ dir: string, blocks: string, datastore: string, identity: string, lock: string, api: string }}
 */
export function repoPaths (dir) {
  const root = path.resolve(dir)
  return {
    dir: root,
    blocks: path.join(root, 'blocks'),
    datastore: path.join(root, 'datastore'),
    identity: path.join(root, 'identity.key'),
    lock: path.join(root, 'repo.lock'),
    api: path.join(root, 'api')
  }
}

/**
 * Create the repo directory if needed and take its lock. A lock left behind
 * by a dead process is taken over; one held by a live process is an error.
 *
 * @param {ReturnType<typeof repoPaths>} paths
 * @returns {() => void} releases the lock (idempotent)
 */
export function lockRepo (paths) {
  fs.mkdirSync(paths.dir, { recursive: true })
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(paths.lock, `${process.pid}\n`, { flag: 'wx' })
      return makeRelease(paths.lock)
    } catch (err) {
      if (err.code !== 'EEXIST') {
        throw new RepoError(`cannot create lock file ${paths.lock}: ${err.message}`)
      }
    }
    const holder = readLockPid(paths.lock)
    if (holder != null && holder !== process.pid && isAlive(holder)) {
      throw new RepoError(`repo ${paths.dir} is locked by another running daemon (pid ${holder}); stop it or use another --repo`)
    }
    fs.rmSync(paths.lock, { force: true })
  }
  throw new RepoError(`cannot take the lock ${paths.lock}`)
}

/** @param {string} file */
function makeRelease (file) {
  let released = false
  return () => {
    if (released) return
    released = true
    if (readLockPid(file) === process.pid) {
      fs.rmSync(file, { force: true })
    }
  }
}

/**
 * @param {string} file
 * @returns {number | undefined}
 */
function readLockPid (file) {
  try {
    const pid = Number.parseInt(fs.readFileSync(file, 'utf8').trim(), 10)
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/**
 * Is `pid` a running ipfsd? A live process whose command line (Linux
 * /proc) does not mention ipfsd is a reused pid, so the lock is stale.
 *
 * @param {number} pid
 */
function isAlive (pid) {
  try {
    process.kill(pid, 0)
  } catch (err) {
    if (err.code !== 'EPERM') return false
  }
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('ipfsd')
  } catch {
    return true
  }
}

/**
 * Load the node's private key, generating and persisting an Ed25519 key on
 * first start so the peer ID survives restarts.
 *
 * @param {ReturnType<typeof repoPaths>} paths
 */
export async function loadOrCreateIdentity (paths) {
  if (fs.existsSync(paths.identity)) {
    try {
      return privateKeyFromProtobuf(fs.readFileSync(paths.identity))
    } catch (err) {
      throw new RepoError(`cannot read identity key ${paths.identity}: ${err.message}`)
    }
  }
  const key = await generateKeyPair('Ed25519')
  const tmp = `${paths.identity}.tmp`
  fs.writeFileSync(tmp, privateKeyToProtobuf(key), { mode: 0o600 })
  fs.renameSync(tmp, paths.identity)
  return key
}

/**
 * Write DIR/api the way Kubo does, so tools that discover the API from the
 * repo find it.
 *
 * @param {ReturnType<typeof repoPaths>} paths
 * @param {import('node:net').AddressInfo} bound  the API server's address
 */
export function writeApiFile (paths, bound) {
  const proto = bound.family === 'IPv6' ? 'ip6' : 'ip4'
  fs.writeFileSync(paths.api, `/${proto}/${bound.address}/tcp/${bound.port}`)
}

/** @param {ReturnType<typeof repoPaths>} paths */
export function removeApiFile (paths) {
  fs.rmSync(paths.api, { force: true })
}
