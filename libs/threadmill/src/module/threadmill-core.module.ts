import { Global, Module, type DynamicModule, type Provider } from '@nestjs/common';
import { redisBackendProviders } from './backend-providers.js';

/**
 * Owns one backend's Redis connections and storage. Global, so Nest
 * initialises it before the application's modules and destroys it after
 * them: Redis opens first and closes last, after workers have drained (see
 * `BackendConnection`). Each `ThreadmillModule` has its own.
 */
@Global()
@Module({})
export class ThreadmillCoreModule {
  /**
   * @param name the backend's name
   * @param rawOptions provider of the unvalidated options (from forRoot or forRootAsync)
   */
  static register(name: string, rawOptions: Provider[], imports: DynamicModule['imports'] = []): DynamicModule {
    const { providers, exports } = redisBackendProviders(name, rawOptions);
    return { module: ThreadmillCoreModule, imports, providers, exports };
  }
}
