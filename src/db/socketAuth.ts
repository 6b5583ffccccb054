import {
  authenticationSasl,
  authenticationSaslContinue,
  authenticationSaslFinal,
  errorResponse,
  frontendMessageType,
  saslResponse,
  startupParameters,
  TERMINATE,
} from './pgWire.ts';
import { SCRAM_SHA_256, ScramExchange, ScramProtocolError, type ScramVerifier } from './scram.ts';

/**
 * One SQL-socket connection's password check, before any of its bytes reach PGlite:
 *
 *   startup ──StartupMessage──▶ sasl-initial ──SASLInitialResponse──▶ sasl-final ──SASLResponse──▶ authenticated
 *
 * Each step answers as PostgreSQL does (AuthenticationSASL, …SASLContinue, …SASLFinal); PGlite then answers the
 * startup message itself (AuthenticationOk, the parameters, ReadyForQuery). A wrong password ends the connection with
 * FATAL 28P01; anything else out of order (a query before the password, a broken SASL message) with FATAL 08P01, as
 * PostgreSQL does; a Terminate just ends it.
 */

export type AuthStep =
  /** Send `reply` and wait for the next message. */
  | { readonly outcome: 'continue'; readonly reply: Uint8Array }
  /** Send `reply`, then hand `startup` to PGlite: from now on the connection's messages go through. */
  | { readonly outcome: 'authenticated'; readonly reply: Uint8Array; readonly startup: Uint8Array }
  /** Send `reply` (if any) and close; `reason` is for the log. */
  | { readonly outcome: 'refused'; readonly reply: Uint8Array | null; readonly reason: string };

export class SocketAuthentication {
  readonly #verifier: ScramVerifier;
  #state: 'startup' | 'sasl-initial' | 'sasl-final' | 'authenticated' | 'refused' = 'startup';
  #startup: Uint8Array | undefined;
  #user = '';
  #exchange: ScramExchange | undefined;

  constructor(verifier: ScramVerifier) {
    this.#verifier = verifier;
  }

  get authenticated(): boolean {
    return this.#state === 'authenticated';
  }

  /** The user the startup message named ('' before it), for the log. */
  get user(): string {
    return this.#user;
  }

  receive(message: Uint8Array): AuthStep {
    try {
      return this.#receive(message);
    } catch (error) {
      if (!(error instanceof ScramProtocolError)) throw error;
      return this.#refuse('08P01', error.message);
    }
  }

  #receive(message: Uint8Array): AuthStep {
    if (this.#state === 'authenticated') throw new Error('the connection is authenticated already');
    // Bytes a client pipelined after its refusal, while the connection closes: never for PGlite.
    if (this.#state === 'refused') return { outcome: 'refused', reply: null, reason: 'refused already' };
    if (this.#state !== 'startup' && frontendMessageType(message) === TERMINATE) {
      this.#state = 'refused';
      return { outcome: 'refused', reply: null, reason: 'the client gave up' };
    }
    if (this.#state === 'startup') {
      const parameters = startupParameters(message);
      if (!parameters) return this.#refuse('08P01', 'invalid startup packet');
      this.#startup = message;
      this.#user = parameters.user ?? '';
      this.#exchange = new ScramExchange(this.#verifier);
      this.#state = 'sasl-initial';
      return { outcome: 'continue', reply: authenticationSasl([SCRAM_SHA_256]) };
    }
    const response = saslResponse(message, this.#state === 'sasl-initial');
    if (!response) return this.#refuse('08P01', `expected SASL response, got message type "${frontendMessageType(message)}"`);
    if (this.#state === 'sasl-initial') {
      if (response.mechanism !== SCRAM_SHA_256) return this.#refuse('08P01', 'client selected an invalid SASL authentication mechanism');
      const serverFirst = this.#exchange!.first(response.data);
      this.#state = 'sasl-final';
      return { outcome: 'continue', reply: authenticationSaslContinue(serverFirst) };
    }
    const serverFinal = this.#exchange!.final(response.data);
    if (serverFinal === null) return this.#refuse('28P01', `password authentication failed for user "${this.#user}"`);
    this.#state = 'authenticated';
    return { outcome: 'authenticated', reply: authenticationSaslFinal(serverFinal), startup: this.#startup! };
  }

  #refuse(code: string, message: string): AuthStep {
    this.#state = 'refused';
    return { outcome: 'refused', reply: errorResponse('FATAL', code, message), reason: `${code} ${message}` };
  }
}
