import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The server's half of SCRAM-SHA-256 (RFC 5802, RFC 7677), as PostgreSQL runs it for password authentication: the
 * client proves it knows the password without sending it, and the server proves it knows it too. Chosen over cleartext
 * and MD5 so that a program that squats the port while the daemon is down learns nothing it could log in with.
 *
 * As in PostgreSQL: no channel binding (the socket has no TLS, so only the gs2 headers `n,,` and `y,,` are accepted),
 * and the user name inside the SCRAM messages is ignored (the startup message's is the one that counts).
 */

export const SCRAM_SHA_256 = 'SCRAM-SHA-256';
/** PostgreSQL's default `scram_iterations`. */
const ITERATIONS = 4096;

/** What the server keeps of a password: enough to check a proof, not enough to log in with. */
export interface ScramVerifier {
  readonly salt: Buffer;
  readonly iterations: number;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
}

/** A client message that breaks the protocol (as opposed to a wrong password). */
export class ScramProtocolError extends Error {
  override name = 'ScramProtocolError';
}

/** Derives the verifier once (PBKDF2, `iterations` rounds); each exchange then costs a few HMACs. */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16), iterations = ITERATIONS): ScramVerifier {
  const salted = pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, 32, 'sha256');
  return { salt, iterations, storedKey: sha256(hmac(salted, 'Client Key')), serverKey: hmac(salted, 'Server Key') };
}

/** One exchange: `first` answers the client-first-message, `final` checks the client-final-message. */
export class ScramExchange {
  readonly #verifier: ScramVerifier;
  readonly #serverNonce: string;
  #gs2Header: string | undefined;
  #clientFirstBare: string | undefined;
  #serverFirst: string | undefined;
  #nonce: string | undefined;

  constructor(verifier: ScramVerifier, serverNonce: string = randomBytes(18).toString('base64')) {
    this.#verifier = verifier;
    this.#serverNonce = serverNonce;
  }

  /** The server-first-message (`r=…,s=…,i=…`). */
  first(clientFirst: string): string {
    if (this.#serverFirst !== undefined) throw new ScramProtocolError('SCRAM client-first-message sent twice');
    const header = /^([ny]),,/.exec(clientFirst);
    if (!header) {
      throw new ScramProtocolError(
        clientFirst.startsWith('p=') ? 'SCRAM channel binding is not supported here (no TLS)' : 'malformed SCRAM client-first-message',
      );
    }
    const bare = clientFirst.slice(header[0].length);
    const [user, nonce, ...extensions] = bare.split(',');
    if (!user?.startsWith('n=') || !nonce?.startsWith('r=') || extensions.some((e) => e.startsWith('m='))) {
      throw new ScramProtocolError('malformed SCRAM client-first-message');
    }
    const clientNonce = nonce.slice(2);
    if (!/^[\x21-\x2b\x2d-\x7e]+$/.test(clientNonce)) throw new ScramProtocolError('malformed SCRAM client nonce');
    this.#gs2Header = header[0];
    this.#clientFirstBare = bare;
    this.#nonce = clientNonce + this.#serverNonce;
    this.#serverFirst = `r=${this.#nonce},s=${this.#verifier.salt.toString('base64')},i=${this.#verifier.iterations}`;
    return this.#serverFirst;
  }

  /** The server-final-message (`v=…`) when the client's proof holds; null when it does not (a wrong password). */
  final(clientFinal: string): string | null {
    if (this.#serverFirst === undefined) throw new ScramProtocolError('SCRAM client-final-message before the first');
    const proofAt = clientFinal.lastIndexOf(',p=');
    if (proofAt === -1) throw new ScramProtocolError('malformed SCRAM client-final-message: no proof');
    const withoutProof = clientFinal.slice(0, proofAt);
    const [binding, nonce] = withoutProof.split(',');
    if (binding !== `c=${Buffer.from(this.#gs2Header!, 'latin1').toString('base64')}`) {
      throw new ScramProtocolError('SCRAM channel binding check failed');
    }
    if (nonce !== `r=${this.#nonce}`) throw new ScramProtocolError('SCRAM nonce does not match');
    const proof = Buffer.from(clientFinal.slice(proofAt + 3), 'base64');
    if (proof.length !== 32) throw new ScramProtocolError('malformed SCRAM proof');

    const authMessage = `${this.#clientFirstBare},${this.#serverFirst},${withoutProof}`;
    const clientSignature = hmac(this.#verifier.storedKey, authMessage);
    const clientKey = Buffer.alloc(32);
    for (let i = 0; i < 32; i++) clientKey[i] = proof[i]! ^ clientSignature[i]!;
    if (!timingSafeEqual(sha256(clientKey), this.#verifier.storedKey)) return null;
    return `v=${hmac(this.#verifier.serverKey, authMessage).toString('base64')}`;
  }
}

function hmac(key: Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

function sha256(data: Buffer): Buffer {
  return createHash('sha256').update(data).digest();
}
