import type { DynamicModule, ForwardReference, Type } from '@nestjs/common';
import { MODULE_METADATA } from '@nestjs/common/constants.js';
import { ThreadmillConfigError } from '../errors/threadmill-config.error.js';
import { ThreadmillModule } from '../module/threadmill.module.js';

type Import = Type | DynamicModule | ForwardReference | Promise<DynamicModule> | undefined;

const isDynamic = (value: unknown): value is DynamicModule =>
  typeof value === 'object' && value !== null && 'module' in value;

/**
 * The `ThreadmillModule.forRoot()` / `forRootAsync()` module that `root`
 * imports, directly or through its imports: the very object, which is what
 * `TestingModuleBuilder.overrideModule()` needs. Nest matches an override by
 * identity, so `overrideModule(ThreadmillModule)` never matches the dynamic
 * module `forRoot()` returned.
 * @throws ThreadmillConfigError when `root` imports no ThreadmillModule, or more than one
 */
export function threadmillImportOf(root: Type | DynamicModule): DynamicModule {
  const found: DynamicModule[] = [];
  const seen = new Set<unknown>();
  const visit = (entry: Import): void => {
    const module = (entry as ForwardReference | undefined)?.forwardRef?.() ?? entry;
    if (!module || seen.has(module) || module instanceof Promise) return;
    seen.add(module);
    if (isDynamic(module)) {
      if (module.module === ThreadmillModule) found.push(module);
      for (const child of module.imports ?? []) visit(child as Import);
      visit(module.module);
      return;
    }
    for (const child of (Reflect.getMetadata(MODULE_METADATA.IMPORTS, module) ?? []) as Import[]) visit(child);
  };
  visit(root);
  const name = isDynamic(root) ? root.module.name : root.name;
  if (found.length !== 1) {
    throw new ThreadmillConfigError(
      [
        found.length === 0
          ? `${name} imports no ThreadmillModule.forRoot() or forRootAsync() (a module returned by a promise is not searched)`
          : `${name} imports ${found.length} ThreadmillModule modules; pass the one to replace to overrideModule() yourself`,
      ],
      'ThreadmillTestingModule.importedBy()',
    );
  }
  return found[0]!;
}
