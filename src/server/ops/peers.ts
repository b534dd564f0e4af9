/**
 * The server's drivers are optional peer dependencies (`pg`, `prom-client`, `pino`): a page
 * or a signer that only wants the core never installs them. Each is loaded when first used,
 * and a missing one becomes an error that names the package to install. Node-only.
 */

/**
 * Runs `load` (the package's own `import()`, kept literal for bundlers) and hands back its
 * default export when it has one; a package that is not installed throws `missing(hint)`,
 * where `hint` says how to install it.
 */
export async function loadPeer<T extends object>(
  name: string,
  load: () => Promise<unknown>,
  missing: (hint: string) => Error,
): Promise<T> {
  let module: T & { default?: T };
  try {
    module = (await load()) as T & { default?: T };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND')
      throw missing(
        `the package "${name}", which is not installed: run \`npm install ${name}\` (or \`npm install -g ${name}\` next to a global peg-limits)`,
      );
    throw e;
  }
  return module.default ?? module;
}
