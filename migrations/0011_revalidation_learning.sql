-- What revalidation has learnt of which details change unseen (db/repos/work.ts): a few rows, one per class of ticket.
CREATE TABLE "revalidation_learning" (
	"class" smallint PRIMARY KEY NOT NULL,
	"reads" double precision NOT NULL,
	"found" double precision NOT NULL,
	"expected" double precision NOT NULL,
	"updated_at" timestamp(6) with time zone NOT NULL
);
