// Checks the public API against its reports in etc/ (`npm run check:api`), or writes them
// anew with `--update` (commit them with the change that made them differ).
//
// peg-limits/server's declarations import the core by the package's own name. So that the
// server's report names those types as imports from `peg-limits` instead of repeating them,
// the core's declarations are laid out as an installed package for the check to resolve.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const update = process.argv.includes('--update');
const pkg = 'temp/api/node_modules/peg-limits';
mkdirSync(pkg, { recursive: true });
copyFileSync('dist/index.d.ts', `${pkg}/index.d.ts`);
writeFileSync(`${pkg}/package.json`, '{"name":"peg-limits","types":"index.d.ts"}\n');

let failed = false;
for (const file of ['etc/api-extractor.json', 'etc/api-extractor.server.json']) {
  const config = ExtractorConfig.loadFileAndPrepare(file);
  const result = Extractor.invoke(config, { localBuild: update, showVerboseMessages: false });
  // Writing a changed report anew counts as a warning of its own: only a check fails on it.
  const warnings =
    update && result.apiReportChanged ? result.warningCount - 1 : result.warningCount;
  if (!result.succeeded || warnings > 0 || (result.apiReportChanged && !update)) {
    failed = true;
    process.stderr.write(
      result.apiReportChanged && !update
        ? `${config.reportFilePath}: the public API changed. If that is meant, run \`npm run api:update\` and commit the report with the change.\n`
        : `${file}: ${result.errorCount} errors, ${warnings} warnings\n`,
    );
  }
}
process.exit(failed ? 1 : 0);
