#!/usr/bin/env node
// Completes package-lock.json with entries for the other platforms' optional binaries.
//
// Why: the package registry these machines use serves only the binaries of this platform
// (linux-x64), so `npm install` leaves out of the lockfile the optional packages it cannot
// resolve (@esbuild/darwin-arm64 and the like), and `npm ci` (npm 11) then refuses the
// lockfile as "Missing: … from lock file". Each missing package gets an entry with its
// version and the os/cpu/libc it is for, so `npm ci` sees a complete lockfile and skips
// them as packages for another platform. Run it after every `npm install`.
import { readFileSync, writeFileSync } from 'node:fs';

const OS = [
  'aix',
  'android',
  'darwin',
  'freebsd',
  'linux',
  'netbsd',
  'openbsd',
  'openharmony',
  'sunos',
  'win32',
];
const CPU = ['arm', 'arm64', 'x64', 'ia32', 'ppc64', 'loong64', 'mips64el', 'riscv64', 's390x'];

function platformOf(name) {
  if (name === 'fsevents') return { os: ['darwin'] };
  const tokens = name.replace(/^@[^/]+\//, '').split('-');
  const os = tokens.find((t) => OS.includes(t));
  const cpu = tokens.find((t) => CPU.includes(t));
  if (os === undefined || cpu === undefined) return undefined;
  const out = { os: [os], cpu: [cpu] };
  if (os === 'linux') {
    if (tokens.some((t) => t.startsWith('musl'))) out.libc = ['musl'];
    else if (tokens.some((t) => t.startsWith('gnu'))) out.libc = ['glibc'];
  }
  return out;
}

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const packages = lock.packages;
let added = 0;
for (const [path, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const at = `${path === '' ? '' : `${path}/`}node_modules/${name}`;
    const hoisted = `node_modules/${name}`;
    if (packages[at] !== undefined || packages[hoisted] !== undefined) continue;
    const platform = platformOf(name);
    if (platform === undefined) {
      console.warn(`left alone: ${name} (no platform in its name)`);
      continue;
    }
    packages[hoisted] = {
      version: version.replace(/^[\^~=]/, ''),
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...platform,
    };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) =>
    a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0,
  ),
);
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
console.log(`package-lock.json: ${added} platform entries added`);
