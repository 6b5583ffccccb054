import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { phpJson, wantsJson } from '../../src/simulator/http.ts';
import { matchRoute, parseReplyBody } from '../../src/simulator/routes.ts';

describe('matchRoute', () => {
  it.each([
    ['GET', '/api/v1/tickets', { kind: 'list', group: 'open' }],
    ['GET', '/api/v1/tickets/self', { kind: 'list', group: 'self' }],
    ['GET', '/api/v1/tickets/unassigned?page=2', { kind: 'list', group: 'unassigned' }],
    ['GET', '/api/v1/tickets/resolved/', { kind: 'list', group: 'resolved' }],
    ['GET', '/api/v1/ticket/Ab12Cd34', { kind: 'detail', id: 'Ab12Cd34' }],
    ['HEAD', '/api/v1/ticket/%41b12Cd34', { kind: 'detail', id: 'Ab12Cd34' }],
    ['POST', '/api/v1/ticket/Ab12Cd34/reply', { kind: 'reply', id: 'Ab12Cd34' }],
    ['GET', '/api/v1/tickets/Ab12Cd34', { kind: 'notFound', path: '/api/v1/tickets/Ab12Cd34' }],
    ['GET', '/api/v1/ticket/%E0%A4%A', { kind: 'notFound', path: '/api/v1/ticket/%E0%A4%A' }],
    ['GET', '/api/v2/tickets', { kind: 'notFound', path: '/api/v2/tickets' }],
    ['POST', '/api/v1/tickets', { kind: 'wrongMethod', path: '/api/v1/tickets', allowed: 'GET, HEAD' }],
    ['GET', '/api/v1/ticket/x/reply', { kind: 'wrongMethod', path: '/api/v1/ticket/x/reply', allowed: 'POST' }],
  ])('%s %s', (method, target, route) => {
    expect(matchRoute(method, target)).toEqual(route);
  });
});

describe('parseReplyBody', () => {
  const body = (text: string) => parseReplyBody(Buffer.from(text));
  it.each([
    ['{"message":"Thanks!"}', { ok: true, message: 'Thanks!' }],
    ['{"message":"  ok!  "}', { ok: true, message: 'ok!' }],
    ['{"message":"日本語"}', { ok: true, message: '日本語' }],
    ['{"message":"👍👍👍"}', { ok: true, message: '👍👍👍' }],
    ['{"message":"  ab  "}', { ok: false, status: 422, error: 'The message field must be at least 3 characters.' }],
    ['{"message":"👍👍"}', { ok: false, status: 422, error: 'The message field must be at least 3 characters.' }],
    ['{"message":"   "}', { ok: false, status: 422, error: 'The message field is required.' }],
    ['{}', { ok: false, status: 422, error: 'The message field is required.' }],
    ['', { ok: false, status: 422, error: 'The message field is required.' }],
    ['[1,2]', { ok: false, status: 422, error: 'The message field is required.' }],
    ['{"message":12345}', { ok: false, status: 422, error: 'The message field must be a string.' }],
    ['{"message":', { ok: false, status: 400, error: 'The request body is not valid JSON.' }],
  ])('%s', (text, result) => {
    expect(body(text)).toEqual(result);
  });
});

describe('phpJson', () => {
  it('escapes non-ASCII and slashes as PHP json_encode does, parsing back to the same value', () => {
    const value = { name: 'Zoë 王 🚀', url: 'http://x/y' };
    const text = phpJson(value);
    expect(text).toBe('{"name":"Zo\\u00eb \\u738b \\ud83d\\ude80","url":"http:\\/\\/x\\/y"}');
    expect(JSON.parse(text)).toEqual(value);
  });
});

describe('wantsJson', () => {
  const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
  it.each([
    [{ accept: 'application/json' }, true],
    [{ accept: 'application/json, text/plain, */*' }, true],
    [{ accept: 'application/vnd.api+json' }, true],
    [{ accept: 'text/html;q=0.5, application/json' }, true],
    [{ accept: 'text/html, application/json' }, false],
    [{ accept: '*/*' }, false],
    [{}, false],
    [{ 'x-requested-with': 'XMLHttpRequest' }, true],
    [{ 'x-requested-with': 'XMLHttpRequest', accept: 'text/html' }, false],
  ])('%j → %s', (headers, expected) => {
    expect(wantsJson(req(headers))).toBe(expected);
  });
});
