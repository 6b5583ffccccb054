#!/usr/bin/env node
// The sources are TypeScript; tsx compiles them on load, so the command works straight after `npm install`.
// The Docker image runs the compiled dist/ instead (see Dockerfile).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
