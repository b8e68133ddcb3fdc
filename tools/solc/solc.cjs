#!/usr/bin/env node
// A drop-in `solc` for machines that cannot download native compiler builds.
//
// It answers the two interfaces that build tools use (`--version` and `--standard-json`) the way
// native solc does, backed by the official compiler built to wasm (npm `solc`). Imports that the
// standard JSON does not carry are read from disk like native solc reads them: relative to
// `--base-path`, then each `--include-path`, then the `node_modules` folders above the base path,
// and only from inside those folders or `--allow-paths` (native solc refuses anything else too).
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const USAGE = "usage: solc --version | solc --standard-json [--base-path DIR] [--include-path DIR]... [--allow-paths A,B]";

/** Parse the subset of native solc's flags that build tools pass with --standard-json. */
function parseArgs(argv) {
  const opts = { mode: null, basePath: null, includePaths: [], allowPaths: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? arg.split(/=(.*)/s) : [arg, undefined];
    const value = () => {
      if (inline !== undefined) return inline;
      if (i + 1 >= argv.length) fail(`option ${flag} needs a value`);
      return argv[++i];
    };
    switch (flag) {
      case "--version": opts.mode = "version"; break;
      case "--standard-json": opts.mode = "standard-json"; break;
      case "--base-path": opts.basePath = value(); break;
      case "--include-path": opts.includePaths.push(value()); break;
      case "--allow-paths": opts.allowPaths.push(...value().split(",").filter(Boolean)); break;
      // Flags that do not change standard-json output; accepted so callers need no special case.
      case "--pretty-json": case "--no-color": break;
      case "-o": case "--output-dir": value(); break;
      case "--overwrite": break;
      default: fail(`unsupported option: ${arg}\n${USAGE}`);
    }
  }
  if (!opts.mode) fail(USAGE);
  return opts;
}

function fail(message) {
  process.stderr.write(`solc (wasm): ${message}\n`);
  process.exit(1);
}

/** Folders above `start` that hold a node_modules, nearest first (Node's own lookup order). */
function nodeModulesDirs(start) {
  const dirs = [];
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, "node_modules");
    if (fs.existsSync(candidate)) dirs.push(candidate);
    if (path.dirname(dir) === dir) return dirs;
  }
}

function isInside(file, root) {
  const rel = path.relative(root, file);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** Build solc's import callback: search roots in native order, refuse reads outside allowed roots. */
function makeImportResolver(opts) {
  const base = path.resolve(opts.basePath || process.cwd());
  const searchRoots = [base, ...opts.includePaths.map((p) => path.resolve(p)), ...nodeModulesDirs(base)];
  const allowedRoots = [...searchRoots, ...opts.allowPaths.map((p) => path.resolve(p))];
  return function findImports(importPath) {
    const candidates = path.isAbsolute(importPath)
      ? [importPath]
      : searchRoots.map((root) => path.join(root, importPath));
    for (const file of candidates) {
      if (!fs.existsSync(file)) continue;
      if (!allowedRoots.some((root) => isInside(fs.realpathSync(file), root) || isInside(file, root))) {
        return { error: `File outside of allowed directories: ${importPath}` };
      }
      return { contents: fs.readFileSync(file, "utf8") };
    }
    return { error: `File not found. Searched the following locations: ${searchRoots.map((r) => JSON.stringify(r)).join(", ")}.` };
  };
}

function readStdin() {
  return fs.readFileSync(0, "utf8");
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const solc = require("solc");
  if (opts.mode === "version") {
    // Same two lines as native solc; py-solc-x and ape-solidity parse "Version: X.Y.Z+commit.H".
    process.stdout.write(`solc, the solidity compiler commandline interface\nVersion: ${solc.version()}\n`);
    return;
  }
  const output = solc.compile(readStdin(), { import: makeImportResolver(opts) });
  process.stdout.write(output + "\n");
}

main();
