import { ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DemoAppModule } from './demo-app.module.js';

const app = await NestFactory.create(DemoAppModule, { logger: ['error', 'warn', 'log'] });
app.useGlobalPipes(new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true }));
app.enableShutdownHooks();
await app.listen(Number(process.env['PORT'] ?? 3000), process.env['HOST'] ?? '127.0.0.1');
