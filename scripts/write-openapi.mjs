#!/usr/bin/env node
// Writes dist/openapi.json from the built package, so the document ships as a file too.
import { writeFileSync } from 'node:fs';
import { openApiDocument } from '../dist/index.js';

writeFileSync('dist/openapi.json', `${JSON.stringify(openApiDocument, null, 2)}\n`);
