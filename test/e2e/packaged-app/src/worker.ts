// The worker application: a pool running the app's tasks.
import { runWorker } from '@threadmill/nestjs';
import { AppModule } from './app.module.js';

await runWorker(AppModule);
