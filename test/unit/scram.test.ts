import { describe, expect, it } from 'vitest';
import { ScramExchange, ScramProtocolError, scramVerifier } from '../../src/db/scram.ts';

/** The server half of SCRAM-SHA-256 against the example exchange of RFC 7677 §3 (user "user", password "pencil"). */
const SALT = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64');
const SERVER_NONCE = '%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0';
const CLIENT_FIRST = 'n,,n=user,r=rOprNGfwEbeRWgbNEkqO';
const NONCE = `rOprNGfwEbeRWgbNEkqO${SERVER_NONCE}`;
const CLIENT_FINAL = `c=biws,r=${NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=`;

const exchange = (password = 'pencil') => new ScramExchange(scramVerifier(password, SALT, 4096), SERVER_NONCE);

describe('SCRAM-SHA-256, server side', () => {
  it("answers RFC 7677's exchange with its server-first and server-final messages", () => {
    const x = exchange();
    expect(x.first(CLIENT_FIRST)).toBe(`r=${NONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096`);
    expect(x.final(CLIENT_FINAL)).toBe('v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=');
  });

  it('refuses the proof of another password', () => {
    const x = exchange('not-pencil');
    x.first(CLIENT_FIRST);
    expect(x.final(CLIENT_FINAL)).toBeNull();
  });

  it('refuses a replayed nonce, channel binding it cannot do, and malformed messages', () => {
    const replay = exchange();
    replay.first(CLIENT_FIRST);
    expect(() => replay.final(CLIENT_FINAL.replace(NONCE, 'rOprNGfwEbeRWgbNEkqOother'))).toThrow(ScramProtocolError);
    expect(() => exchange().first('p=tls-server-end-point,,n=,r=abc')).toThrow('channel binding is not supported');
    expect(() => exchange().first('n,a=admin,n=,r=abc')).toThrow(ScramProtocolError);
    expect(() => exchange().first('n,,r=abc')).toThrow(ScramProtocolError);
    expect(() => exchange().final(CLIENT_FINAL)).toThrow('before the first');
    const wrongBinding = exchange();
    wrongBinding.first(CLIENT_FIRST);
    expect(() => wrongBinding.final(CLIENT_FINAL.replace('c=biws', 'c=eSws'))).toThrow('channel binding check failed');
    const shortProof = exchange();
    shortProof.first(CLIENT_FIRST);
    expect(() => shortProof.final(`c=biws,r=${NONCE},p=AAAA`)).toThrow('malformed SCRAM proof');
  });
});
