import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.ts';
import { openToken, parseFleetKey, sealedKeyId, sealToken, SealError, type FleetKey } from '../../src/fleet/tokenSeal.ts';

const TOKEN = 'tok_live_5f3c9a1e-SECRET-d00dfeed';
const keyOf = (bytes: Buffer) => parseFleetKey(bytes.toString('base64'));

function sealErrorOf(fn: () => unknown): SealError {
  try {
    fn();
  } catch (error) {
    if (error instanceof SealError) return error;
    throw error;
  }
  throw new Error('expected a SealError');
}

function configProblemOf(value: string | undefined): string {
  try {
    parseFleetKey(value);
  } catch (error) {
    if (error instanceof ConfigError) {
      expect(error.problems).toHaveLength(1);
      return error.problems[0]!;
    }
    throw error;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(value)}`);
}

describe('parseFleetKey', () => {
  const bytes = randomBytes(32);

  it('takes 32 bytes as base64 or hex, the same key either way, with the id sha256 gives', () => {
    const fromBase64 = parseFleetKey(bytes.toString('base64'));
    const fromHex = parseFleetKey(bytes.toString('hex'));
    const fromUpperHex = parseFleetKey(` ${bytes.toString('hex').toUpperCase()}\n`);
    expect(fromBase64.key.equals(bytes)).toBe(true);
    expect(fromHex.key.equals(bytes)).toBe(true);
    expect(fromUpperHex.key.equals(bytes)).toBe(true);
    expect(fromBase64.id).toBe(createHash('sha256').update(bytes).digest('hex').slice(0, 8));
    expect(fromHex.id).toBe(fromBase64.id);
  });

  it.each([
    ['unset', undefined],
    ['empty', '   '],
    ['short base64 (16 bytes)', randomBytes(16).toString('base64')],
    ['long base64 (48 bytes)', randomBytes(48).toString('base64')],
    ['short hex (31 bytes)', randomBytes(31).toString('hex')],
    ['long hex (33 bytes)', randomBytes(33).toString('hex')],
    ['not base64', `${'!'.repeat(43)}=`],
    ['base64url instead of base64', Buffer.from(Array(32).fill(0xfb)).toString('base64url') + '='],
    ['non-canonical base64 (stray low bits)', `${'A'.repeat(42)}B=`],
    ['a passphrase', 'correct horse battery staple'],
    ['a passphrase of 44 characters', 'this passphrase is exactly forty-four chars!'],
  ])('refuses %s with the hint, never showing the value', (_what, value) => {
    const problem = configProblemOf(value);
    expect(problem).toMatch(/^FLEET_KEY /);
    expect(problem).toContain('openssl rand -base64 32');
    if (value?.trim()) expect(problem).not.toContain(value.trim());
  });
});

describe('sealToken / openToken', () => {
  const key = keyOf(randomBytes(32));

  it('round-trips, with a fresh IV each time, and no token text in the blob', () => {
    const a = sealToken(key, 'acme', TOKEN);
    const b = sealToken(key, 'acme', TOKEN);
    expect(a.equals(b)).toBe(false);
    expect(openToken(key, 'acme', a)).toBe(TOKEN);
    expect(openToken(key, 'acme', b)).toBe(TOKEN);
    expect(a.includes(Buffer.from(TOKEN))).toBe(false);
    expect(a.includes(Buffer.from('SECRET'))).toBe(false);
    // The layout FLEET.md gives: version, key id, iv, tag, ciphertext (GCM: as long as the plaintext).
    expect(a[0]).toBe(0x01);
    expect(a.subarray(1, 5).toString('hex')).toBe(key.id);
    expect(a.length).toBe(1 + 4 + 12 + 16 + Buffer.byteLength(TOKEN));
    expect(sealedKeyId(a)).toBe(key.id);
  });

  it('round-trips any UTF-8 token', () => {
    const odd = 'jeton-été-🔑-\u0000-end';
    expect(openToken(key, 'x1', sealToken(key, 'x1', odd))).toBe(odd);
  });

  it('refuses an empty token and an absurdly long one', () => {
    expect(sealErrorOf(() => sealToken(key, 'acme', '')).reason).toBe('format');
    expect(sealErrorOf(() => sealToken(key, 'acme', 'x'.repeat(4097))).reason).toBe('format');
  });

  it('names both key ids when opened with another key, and no token text', () => {
    const other: FleetKey = keyOf(randomBytes(32));
    const sealed = sealToken(key, 'acme', TOKEN);
    const error = sealErrorOf(() => openToken(other, 'acme', sealed));
    expect(error.reason).toBe('wrong_key');
    expect(error.message).toContain(key.id);
    expect(error.message).toContain(other.id);
    expect(error.message).not.toContain('SECRET');
  });

  it('refuses a key whose id collides but whose bytes differ (GCM authenticates, the id only names)', () => {
    const sealed = sealToken(key, 'acme', TOKEN);
    const impostor: FleetKey = { key: randomBytes(32), id: key.id };
    expect(sealErrorOf(() => openToken(impostor, 'acme', sealed)).reason).toBe('unauthentic');
  });

  it('refuses every single-bit change of the blob (iv, tag, ciphertext) and a truncated one', () => {
    const sealed = sealToken(key, 'acme', TOKEN);
    for (let byte = 5; byte < sealed.length; byte++) {
      const tampered = Buffer.from(sealed);
      tampered[byte]! ^= 0x01;
      const error = sealErrorOf(() => openToken(key, 'acme', tampered));
      expect(error.reason).toBe('unauthentic');
      expect(error.message).not.toContain('SECRET');
    }
    expect(sealErrorOf(() => openToken(key, 'acme', sealed.subarray(0, sealed.length - 1))).reason).toBe('unauthentic');
    expect(sealErrorOf(() => openToken(key, 'acme', sealed.subarray(0, 20))).reason).toBe('format');
  });

  it('refuses another version byte, and a changed key id as another key', () => {
    const sealed = sealToken(key, 'acme', TOKEN);
    const version = Buffer.from(sealed);
    version[0] = 0x02;
    expect(sealErrorOf(() => openToken(key, 'acme', version)).reason).toBe('version');
    const keyId = Buffer.from(sealed);
    keyId[1]! ^= 0xff;
    expect(sealErrorOf(() => openToken(key, 'acme', keyId)).reason).toBe('wrong_key');
  });

  it("does not open a blob in another account's row (the account name is authenticated)", () => {
    const sealed = sealToken(key, 'acme', TOKEN);
    const error = sealErrorOf(() => openToken(key, 'globex', sealed));
    expect(error.reason).toBe('unauthentic');
    expect(error.message).toContain('globex');
    expect(error.message).not.toContain('SECRET');
    // A prefix of the name is another name too.
    expect(sealErrorOf(() => openToken(key, 'acm', sealed)).reason).toBe('unauthentic');
  });
});
