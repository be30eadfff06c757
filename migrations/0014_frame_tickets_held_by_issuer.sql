-- Frame tickets (SPEC §6) are held, unspent, in the memory of the instance that issued
-- them, which alone decides whether a load gets one (another instance asks it through
-- notifications on `strad_frame_tickets`); no table records spends any more.
DROP TABLE frame_ticket_spends;
