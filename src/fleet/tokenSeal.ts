import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { decodeFleetKey, FLEET_KEY_HINT, fleetKeyProblem } from '../config/fleetKey.ts';
import { ConfigError } from '../errors.ts';

/**
 * The fleet's API tokens at rest: AES-256-GCM (node:crypto) under FLEET_KEY, so that the `accounts` table, its backups
 * and a reader who somehow gets at it hold no usable token. A token is opened only in a worker's memory, for its pass.
 *
 * A sealed token (bytea) is
 *
 *   0x01 (version) | key id (4 bytes: the first 4 of sha256(key)) | iv (12 random bytes) | tag (16) | ciphertext
 *
 * with the additional authenticated data `ticket-mirror account <name>`: a blob copied into another account's row does
 * not open there (an operator with write access to the table cannot make account b poll with account a's token). The key
 * id names the key a blob was sealed with, so opening with another key says which one is needed — without a guess at the
 * token, and without the token in any message: errors here never carry token text.
 */

export interface FleetKey {
  /** 32 bytes. */
  readonly key: Buffer;
  /** Hex of the first 4 bytes of sha256(key): shown by `accounts list`, named by errors. Not secret. */
  readonly id: string;
}

/** A sealed token that does not open: wrong key, wrong account, tampered, or not a sealed token at all. */
export class SealError extends Error {
  override name = 'SealError';
  constructor(
    message: string,
    /** Why, for callers that act on it (a worker marks the account, the CLI picks its hint). */
    readonly reason: 'format' | 'version' | 'wrong_key' | 'unauthentic',
  ) {
    super(message);
  }
}

const VERSION = 0x01;
const KEY_ID_BYTES = 4;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + KEY_ID_BYTES + IV_BYTES + TAG_BYTES;
/** Largest token sealed: far above any bearer token, small enough that a row stays a row. */
export const MAX_TOKEN_BYTES = 4096;

/**
 * FLEET_KEY as a key, or a ConfigError with the hint (config/fleetKey.ts has the rule, which loadConfig checks too).
 * The value never appears in the message.
 */
export function parseFleetKey(value: string | undefined): FleetKey {
  const text = value?.trim() ?? '';
  if (text === '') throw new ConfigError([`FLEET_KEY is not set: ${FLEET_KEY_HINT}`]);
  const key = decodeFleetKey(text);
  if (!key) throw new ConfigError([fleetKeyProblem(text)!]);
  return Object.freeze({ key, id: keyIdOf(key) });
}

/** The id a key is known by: the first 4 bytes of its sha256, in hex. */
export function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest().subarray(0, KEY_ID_BYTES).toString('hex');
}

function aad(account: string): Buffer {
  return Buffer.from(`ticket-mirror account ${account}`, 'utf8');
}

/** The token sealed for `account` under `key`, with a fresh random IV: sealing twice gives two different blobs. */
export function sealToken(key: FleetKey, account: string, token: string): Buffer {
  const plain = Buffer.from(token, 'utf8');
  if (plain.length === 0) throw new SealError('an empty token cannot be sealed', 'format');
  if (plain.length > MAX_TOKEN_BYTES) throw new SealError(`a token longer than ${MAX_TOKEN_BYTES} bytes cannot be sealed`, 'format');
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad(account));
  const ciphertext = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), Buffer.from(key.id, 'hex'), iv, cipher.getAuthTag(), ciphertext]);
}

/** The key id a sealed token names, or null when it is not a sealed token of a known version. */
export function sealedKeyId(sealed: Buffer): string | null {
  if (sealed.length < HEADER_BYTES + 1 || sealed[0] !== VERSION) return null;
  return sealed.subarray(1, 1 + KEY_ID_BYTES).toString('hex');
}

/** The token sealed for `account`, or a SealError that says why without any of the token's text. */
export function openToken(key: FleetKey, account: string, sealed: Buffer): string {
  if (sealed.length < HEADER_BYTES + 1) {
    throw new SealError(`the sealed token of account ${account} is not a sealed token (${sealed.length} bytes)`, 'format');
  }
  if (sealed[0] !== VERSION) {
    throw new SealError(`the sealed token of account ${account} has version ${sealed[0]}, which this ticket-mirror does not know`, 'version');
  }
  const keyId = sealed.subarray(1, 1 + KEY_ID_BYTES).toString('hex');
  if (keyId !== key.id) {
    throw new SealError(
      `the token of account ${account} was sealed with key ${keyId}, but FLEET_KEY is key ${key.id}: set the FLEET_KEY it was sealed with, or add the account's token again (accounts remove, accounts add)`,
      'wrong_key',
    );
  }
  const iv = sealed.subarray(1 + KEY_ID_BYTES, 1 + KEY_ID_BYTES + IV_BYTES);
  const tag = sealed.subarray(1 + KEY_ID_BYTES + IV_BYTES, HEADER_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key.key, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad(account));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(sealed.subarray(HEADER_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    // Node's own message ("Unsupported state or unable to authenticate data") says nothing useful; this one does.
    throw new SealError(
      `the sealed token of account ${account} does not open with key ${key.id}: it was altered, or sealed for another account (seal it for this name: accounts seal ${account})`,
      'unauthentic',
    );
  }
}
