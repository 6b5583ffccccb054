/** node-postgres' client half of SCRAM-SHA-256 (pg/lib/crypto/sasl.js), used by tests that speak the protocol raw. */
declare module 'pg/lib/crypto/sasl' {
  interface ScramSession {
    mechanism: string;
    clientNonce: string;
    /** The next message to send: client-first, then client-final. */
    response: string;
    message: string;
  }
  const sasl: {
    startSession(mechanisms: string[]): ScramSession;
    continueSession(session: ScramSession, password: string, serverData: string): Promise<void>;
    /** Throws unless the server's signature proves it knows the password. */
    finalizeSession(session: ScramSession, serverData: string): void;
  };
  export default sasl;
}
