import { Body, Controller, Get, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import { IsInt, Max, Min } from 'class-validator';
import { DemoBatchService } from './demo-batch.service.js';

class StartBatchDto {
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  count!: number;
}

/** The demo API: the HTTP face of a producer application. */
@Controller()
export class DemoController {
  constructor(private readonly batches: DemoBatchService) {}

  @Post('demo/batches')
  start(@Body() body: StartBatchDto) {
    return this.batches.start(body.count);
  }

  @Get('demo/batches/:id')
  progress(@Param('id', ParseUUIDPipe) id: string) {
    return this.batches.progress(id);
  }

  @Get('demo/batches/:id/summary')
  summary(@Param('id', ParseUUIDPipe) id: string) {
    return this.batches.summary(id);
  }
}
