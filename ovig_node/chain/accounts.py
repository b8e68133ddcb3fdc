"""Signing accounts: encrypted keystores for real chains, the published test keys on a devnet.

Secrets never travel through arguments or files in the clear: a keystore's password comes from a
file or an environment variable, and the only plaintext keys OVIG ever handles are the well-known
anvil test keys, derived from the public test mnemonic.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from eth_account import Account
from eth_account.signers.local import LocalAccount
from web3 import Web3

from ovig_node.chain.errors import KeystoreError

# The standard Hardhat/anvil test mnemonic: its keys are public, so only ever use them on a devnet.
DEVNET_MNEMONIC = "test test test test test test test test test test test junk"
DEVNET_ACCOUNTS = 10

Account.enable_unaudited_hdwallet_features()


def devnet_account(index: int) -> LocalAccount:
    """Test account ``index`` of the devnet mnemonic (account 0 is anvil's first funded account)."""
    if not 0 <= index < DEVNET_ACCOUNTS:
        raise ValueError(f"devnet account index must be 0..{DEVNET_ACCOUNTS - 1}, got {index}")
    return Account.from_mnemonic(DEVNET_MNEMONIC, account_path=f"m/44'/60'/0'/0/{index}")


def read_password(*, password_file: str | os.PathLike[str] | None = None, env_var: str | None = None) -> str:
    """A keystore password from a file (first line) or an environment variable, never from argv."""
    if password_file is not None:
        try:
            return Path(password_file).read_text().splitlines()[0] if Path(password_file).stat().st_size else ""
        except OSError as exc:
            raise KeystoreError(str(password_file), f"cannot read password file: {exc.strerror}") from None
    if env_var is not None:
        if env_var not in os.environ:
            raise KeystoreError("-", f"environment variable {env_var} is not set")
        return os.environ[env_var]
    raise KeystoreError("-", "no password source: pass a password file or an environment variable name")


def load_keystore(path: str | os.PathLike[str], password: str) -> LocalAccount:
    """Decrypt an eth-account (Web3 Secret Storage) keystore file."""
    try:
        encrypted = json.loads(Path(path).read_text())
    except OSError as exc:
        raise KeystoreError(str(path), f"cannot read: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise KeystoreError(str(path), f"not JSON ({exc.msg} at line {exc.lineno})") from None
    try:
        key = Account.decrypt(encrypted, password)
    except ValueError as exc:
        raise KeystoreError(str(path), f"cannot decrypt ({exc}); wrong password?") from None
    return Account.from_key(key)


def write_keystore(account: LocalAccount, path: str | os.PathLike[str], password: str) -> Path:
    """Encrypt ``account`` into a new keystore file readable by its owner only."""
    target = Path(path)
    if target.exists():
        raise KeystoreError(str(target), "already exists; refusing to overwrite a key")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(Account.encrypt(account.key, password), out)
    return target


def checksum_addresses(values: Iterable[str]) -> frozenset[str]:
    """The checksummed forms of ``values``; ValueError naming the first that is not an address."""
    for value in values:
        if not Web3.is_address(value):
            raise ValueError(f"{value!r} is not an address")
    return frozenset(Web3.to_checksum_address(v.lower()) for v in values)
