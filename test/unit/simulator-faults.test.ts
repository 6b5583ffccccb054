import { describe, expect, it } from 'vitest';
import { FaultInjector } from '../../src/simulator/faults.ts';

describe('FaultInjector', () => {
  it('applies a fault to the next matching requests, `times` times', () => {
    const faults = new FaultInjector();
    faults.inject({ kind: 'status503', match: '/tickets/resolved', times: 2 });
    expect(faults.take('/api/v1/tickets')).toBeUndefined();
    expect(faults.take('/api/v1/tickets/resolved')?.kind).toBe('status503');
    expect(faults.take('/api/v1/tickets/resolved?x=1')?.kind).toBe('status503');
    expect(faults.take('/api/v1/tickets/resolved')).toBeUndefined();
    expect(faults.pending).toBe(0);
  });

  it('matches a RegExp (global ones too) and serves faults in injection order', () => {
    const faults = new FaultInjector();
    faults.inject({ kind: 'slow', match: /\/ticket\/\w+$/g, delayMs: 5, times: 3 });
    faults.inject({ kind: 'reset' });
    expect(faults.take('/api/v1/ticket/abc')).toEqual({ kind: 'slow', delayMs: 5, retryAfterSec: 1 });
    expect(faults.take('/api/v1/ticket/abc')?.kind).toBe('slow');
    expect(faults.take('/api/v1/tickets')?.kind).toBe('reset');
    expect(faults.take('/api/v1/ticket/abc')?.kind).toBe('slow');
    expect(faults.take('/api/v1/ticket/abc')).toBeUndefined();
  });

  it('defaults to one use on any request; clear() drops everything', () => {
    const faults = new FaultInjector();
    faults.inject({ kind: 'html' });
    faults.inject({ kind: 'status500', times: 10 });
    expect(faults.pending).toBe(11);
    expect(faults.take('/anything')?.kind).toBe('html');
    faults.clear();
    expect(faults.take('/anything')).toBeUndefined();
  });

  it('rejects unknown kinds and bad counts', () => {
    const faults = new FaultInjector();
    expect(() => faults.inject({ kind: 'explode' as never })).toThrow(RangeError);
    expect(() => faults.inject({ kind: 'reset', times: 0 })).toThrow(RangeError);
  });

  it('carries the scripted answer of an `answer` fault and the size of an `oversized` one, and checks them', () => {
    const faults = new FaultInjector();
    faults.inject({ kind: 'answer', answer: { status: 404, body: '{"message":"Not Found"}' } });
    faults.inject({ kind: 'oversized', bytes: 100, chunked: true });
    faults.inject({ kind: 'hang' });
    expect(faults.take('/a')).toEqual({ kind: 'answer', delayMs: 1000, retryAfterSec: 1, answer: { status: 404, body: '{"message":"Not Found"}' } });
    expect(faults.take('/a')).toEqual({ kind: 'oversized', delayMs: 1000, retryAfterSec: 1, oversized: { bytes: 100, chunked: true } });
    expect(faults.take('/a')).toEqual({ kind: 'hang', delayMs: 1000, retryAfterSec: 1 });
    expect(() => faults.inject({ kind: 'answer' })).toThrow(RangeError);
    expect(() => faults.inject({ kind: 'answer', answer: { status: 42 } })).toThrow(RangeError);
    expect(() => faults.inject({ kind: 'oversized', bytes: 1 })).toThrow(RangeError);
  });

  it('marks a fault that takes the answer after the application handled the request, for the kinds that can', () => {
    const faults = new FaultInjector();
    faults.inject({ kind: 'answer', afterApplication: true, answer: { status: 201, body: '<html></html>' } });
    faults.inject({ kind: 'reset', afterApplication: true });
    faults.inject({ kind: 'answer', afterApplication: false, answer: { status: 502 } });
    expect(faults.take('/a')).toMatchObject({ kind: 'answer', afterApplication: true });
    expect(faults.take('/a')).toEqual({ kind: 'reset', delayMs: 1000, retryAfterSec: 1, afterApplication: true });
    expect(faults.take('/a')).not.toHaveProperty('afterApplication');
    expect(() => faults.inject({ kind: 'status503', afterApplication: true })).toThrow(/afterApplication applies to answer, reset, hang/);
  });
});
