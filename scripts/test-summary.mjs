#!/usr/bin/env node
// Prints the test run's closing line, "tests: N passed, N failed", from vitest's JSON report.
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(process.argv[2] ?? 'test-results.json', 'utf8'));
const skipped = report.numPendingTests + (report.numTodoTests ?? 0);
console.log(
  `tests: ${report.numPassedTests} passed, ${report.numFailedTests} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`,
);
process.exit(report.numFailedTests === 0 && report.numTotalTests > 0 ? 0 : 1);
