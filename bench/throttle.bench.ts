/** The cost of one throttle key verification: a right secret, a wrong one, an unknown name. */
import { bench, describe } from 'vitest';
import {
  applyAll,
  createLimitsState,
  generateThrottleSecret,
  hashThrottleSecret,
  startThrottle,
} from '../src/index.js';

const secret = generateThrottleSecret();
const wrong = generateThrottleSecret();
const r = applyAll(createLimitsState(), [
  { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(secret) },
]);
if (!r.ok) throw r.error;
const state = r.state;

describe('startThrottle verification', () => {
  bench('verify right secret', () => {
    startThrottle(state, { name: 'ops-1', secret });
  });
  bench('verify wrong secret', () => {
    startThrottle(state, { name: 'ops-1', secret: wrong });
  });
  bench('verify unknown name', () => {
    startThrottle(state, { name: 'nobody', secret: wrong });
  });
});
