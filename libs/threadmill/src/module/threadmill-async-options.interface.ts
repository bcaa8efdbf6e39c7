import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency, Type } from '@nestjs/common';
import type { ThreadmillModuleOptions } from '../options/threadmill-options.interface.js';

// forRootAsync's options, apart from forRoot's: they are made of Nest's provider types, and forRoot's options
// (options/) sit in the bottom layer, which imports nothing of Nest.

/** A class that builds the options, for `forRootAsync({ useClass | useExisting })`. */
export interface ThreadmillOptionsFactory {
  createThreadmillOptions(): ThreadmillModuleOptions | Promise<ThreadmillModuleOptions>;
}

/** Options of `ThreadmillModule.forRootAsync()`. */
export interface ThreadmillModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /**
   * Name of the backend (see {@link ThreadmillModuleOptions.name}). Given
   * here, not by the factory: the backend's injection tokens carry it, and
   * they exist before any factory runs.
   * @defaultValue `'default'`
   */
  name?: string;
  /** Build the options from injected providers. */
  useFactory?: (...args: any[]) => ThreadmillModuleOptions | Promise<ThreadmillModuleOptions>;
  /** Providers to inject into `useFactory`. */
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  /** A class Threadmill instantiates to build the options. */
  useClass?: Type<ThreadmillOptionsFactory>;
  /** An existing provider that builds the options. */
  useExisting?: Type<ThreadmillOptionsFactory>;
  /**
   * Register the module globally.
   * @defaultValue `true`
   */
  isGlobal?: boolean;
}
