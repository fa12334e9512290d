#!/usr/bin/env python3
"""gcmpi-ab's pure parts: reading statistics reports of any shape without
double counting, the metric, --env parsing, and how variables reach ranks."""
import importlib.machinery
import importlib.util
import os
import re
import sys
import unittest

SCRIPT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "..", "..", "bench", "gcmpi-ab")
loader = importlib.machinery.SourceFileLoader("gcmpi_ab", SCRIPT)
spec = importlib.util.spec_from_loader("gcmpi_ab", loader)
ab = importlib.util.module_from_spec(spec)
loader.exec_module(ab)


class StatsReports(unittest.TestCase):
    def test_top_level_totals_are_taken_as_they_are(self):
        r = {"bytes_offered": 1000, "bytes_sent": 10,
             "communicators": [{"bytes_offered": 1000, "bytes_sent": 10}]}
        self.assertEqual(ab.summarize_stats(r),
                         {"bytes_offered": 1000, "bytes_sent": 10, "compression": 100.0})

    def test_per_communicator_entries_are_summed(self):
        r = {"communicators": [{"bytes_offered": 600, "bytes_sent": 6},
                               {"bytes_offered": 400, "bytes_sent": 4}]}
        self.assertEqual(ab.summarize_stats(r)["bytes_offered"], 1000)
        self.assertEqual(ab.summarize_stats(r)["compression"], 100.0)

    def test_a_totals_object_wins_over_its_siblings(self):
        r = {"totals": {"bytes_offered": 50, "bytes_sent": 5},
             "per_comm": {"world": {"bytes_offered": 50, "bytes_sent": 5}}}
        self.assertEqual(ab.summarize_stats(r)["bytes_offered"], 50)

    def test_nested_codec_entries_are_summed_once(self):
        r = {"comms": [{"name": "w", "codecs": {"topk": {"bytes_offered": 8, "bytes_sent": 2}}},
                       {"name": "x", "codecs": {"int8": {"bytes_offered": 8, "bytes_sent": 2}}}]}
        self.assertEqual(ab.summarize_stats(r)["bytes_sent"], 4)

    def test_missing_fields_and_booleans_give_none(self):
        self.assertEqual(ab.summarize_stats({"calls": 3, "bytes_sent": True}),
                         {"bytes_offered": None, "bytes_sent": None, "compression": None})
        self.assertEqual(ab.summarize_stats(None)["compression"], None)

    def test_nothing_sent_gives_no_ratio_rather_than_a_division_by_zero(self):
        self.assertIsNone(ab.summarize_stats({"bytes_offered": 5, "bytes_sent": 0})["compression"])


class Metric(unittest.TestCase):
    def test_the_last_match_is_the_metric(self):
        rx = re.compile(r"accuracy=([0-9.]+)")
        out = "epoch=1 accuracy=0.5\nepoch=2 accuracy=0.75\nRESULT accuracy=0.8812 loss=1\n"
        self.assertEqual(ab.parse_metric(rx, out), 0.8812)

    def test_no_match_or_no_number_gives_none(self):
        self.assertIsNone(ab.parse_metric(re.compile(r"acc=([0-9.]+)"), "loss=1"))
        self.assertIsNone(ab.parse_metric(re.compile(r"acc=([0-9.]*)"), "acc=."))


class Environment(unittest.TestCase):
    def test_env_words_are_split_like_a_shell(self):
        self.assertEqual(ab.parse_env(["GCMPI_CODEC=topk GCMPI_RATIO=0.01", "A='x y'"]),
                         {"GCMPI_CODEC": "topk", "GCMPI_RATIO": "0.01", "A": "x y"})

    def test_a_word_without_a_name_is_refused(self):
        for bad in ["GCMPI_CODEC", "=1", "1X=2", "A='unterminated"]:
            with self.assertRaises(ab.UsageError, msg=bad):
                ab.parse_env([bad])

    def test_open_mpi_gets_dash_x_right_after_the_launcher(self):
        cmd = ab.arm_b_command(["mpirun", "-np", "4", "./app"], "openmpi",
                               {"LD_PRELOAD": "/l.so", "GCMPI_CODEC": "topk"})
        self.assertEqual(cmd, ["mpirun", "-x", "LD_PRELOAD=/l.so", "-x", "GCMPI_CODEC=topk",
                               "-np", "4", "./app"])

    def test_hydra_gets_genv(self):
        cmd = ab.arm_b_command(["mpiexec", "-n", "2", "./app"], "hydra", {"A": "1"})
        self.assertEqual(cmd, ["mpiexec", "-genv", "A", "1", "-n", "2", "./app"])

    def test_other_commands_are_left_alone(self):
        self.assertEqual(ab.arm_b_command(["./app", "x"], None, {"A": "1"}), ["./app", "x"])


class Netem(unittest.TestCase):
    def test_netem_nodes_asks_netem_for_an_emulated_cluster(self):
        args = ab.parse_args(["--netem", "1gbit", "--netem-nodes", "2", "--env", "A=1",
                              "--", "mpirun", "-np", "4", "./app"])
        cmd = ab.wrap_netem(args.command, args)
        self.assertEqual(os.path.basename(cmd[0]), "netem")
        self.assertEqual(cmd[1:], ["--nodes", "2", "1gbit", "--", "mpirun", "-np", "4", "./app"])

    def test_netem_nodes_without_a_rate_is_refused(self):
        with self.assertRaises(ab.UsageError):
            ab.parse_args(["--netem-nodes", "2", "--env", "A=1", "--", "./app"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
