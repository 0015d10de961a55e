"""Inputs of a run: built-in datasets, and pasted text and files turned into samples (the tasks
they fill are ``core.tasks``).

Uploads: ``uploads.read_upload`` (bytes → text by ``encodings`` → DataFrame by ``csv_format`` /
``json_format``) → ``column_mapping.suggest_mapping`` (task field → column) →
``samples.samples_from_frame``. ``input_files.load_input_file`` reads a file on disk and does all
three with the suggested mapping (for the command line). ``pasted`` reads the paste box. Every
reader refuses bad input with an ``errors.InputError`` written for the user, within ``limits``
and the character rule of ``characters``.
"""
