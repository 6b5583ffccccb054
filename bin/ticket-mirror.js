#!/usr/bin/env node
// The sources are TypeScript; tsx compiles them on load, so the command works straight after `npm install`.
// The Docker image runs the compiled dist/ instead (see Dockerfile).
import { register } from 'tsx/esm/api';

register();
// Before the rest of the sources compile (about two seconds): a SIGTERM meanwhile is held for the command, see there.
const { holdSignals } = await import('../src/cli/heldSignals.ts');
holdSignals();
await import('../src/cli/main.ts');
