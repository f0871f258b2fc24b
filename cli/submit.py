"""The hwcheck command line as a script for spark-submit, which runs a ``.py`` file:

    PYSPARK_PYTHON=$(which python) spark-submit --master spark://host:7077 \\
        "$(python -c 'import hwcheck.cli.submit as s; print(s.__file__)')" verify --engine spark --mode epoch

Without ``--master`` after ``verify``, the Spark engine uses the master spark-submit was given.
"""

from hwcheck.cli.main import main

if __name__ == "__main__":
    main()
