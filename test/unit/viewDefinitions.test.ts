import { describe, expect, it } from 'vitest';
import { shippedViews } from '../../src/db/connect.ts';
import { viewDefinitions } from '../../src/db/repos/views.ts';
import { VIEWS } from '../../src/db/viewComments.ts';

describe('viewDefinitions: the views the migrations leave', () => {
  it.each([
    { case: 'one view', statements: ['CREATE VIEW a AS SELECT 1'], views: [['a', 'CREATE VIEW a AS SELECT 1']] },
    {
      case: 'the last definition wins, in the order of the last definitions',
      statements: ['CREATE VIEW a AS SELECT 1', 'CREATE VIEW b AS SELECT 2', '-- faster\nCREATE OR REPLACE VIEW a AS SELECT 3'],
      views: [
        ['b', 'CREATE VIEW b AS SELECT 2'],
        ['a', '-- faster\nCREATE OR REPLACE VIEW a AS SELECT 3'],
      ],
    },
    { case: 'a view a later migration drops is gone', statements: ['CREATE VIEW a AS SELECT 1', 'DROP VIEW IF EXISTS "a"'], views: [] },
    { case: 'dropped, then made anew', statements: ['create view a as select 1', 'drop view a', 'create view a as select 2'], views: [['a', 'create view a as select 2']] },
    { case: 'other statements are not views', statements: ['CREATE TABLE v (id int)', 'COMMENT ON VIEW a IS $$x$$', 'CREATE INDEX view_x ON v (id)'], views: [] },
  ])('$case', ({ statements, views }) => {
    expect(viewDefinitions(statements).map((v) => [v.name, v.statement])).toEqual(views);
  });

  it('the shipped migrations leave the BI views db/viewComments.ts documents, and no other', () => {
    expect(shippedViews().map((v) => v.name).sort()).toEqual(Object.keys(VIEWS).sort());
  });
});
